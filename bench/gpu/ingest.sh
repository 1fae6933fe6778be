#!/bin/bash
# ingest.sh (on the device, after setup.sh): the ingest bench with the defaults (index.device auto
# -> the GPU; the default 2,048 MiB budget, which the CUDA runtime mostly holds), then with room
# for the parser and 8 page processes.
source .gpu/s/env.sh
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
timeout 300 python3 bench/ingest_speed.py --kinds text,tables,slides --variants onnx+derive --out /tmp/speed 2>&1 | tee $OUT/ingest_default.md
STRATA_INGEST__MEMORY_BUDGET_MB=8192 STRATA_INGEST__PARSE_PROCESSES=8 timeout 200 python3 bench/ingest_speed.py --kinds text,tables,slides \
  --variants onnx+derive --no-detail --out /tmp/speed8 2>&1 | tee $OUT/ingest_p8.md
