export TIKTOKEN_CACHE_DIR=$PWD/.gpu/tk PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
mkdir -p ../shared && ln -sfn /tmp/x/bench ../shared/bench
