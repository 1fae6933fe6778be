#!/bin/bash
# scale.sh: the sample corpus ingested there, then the scale bench at 1k and 5k pages
source .gpu/s/env.sh
python3 -m backend ingest --workspace /tmp/sample sample_corpus/*.pdf 2>&1 | tail -3
timeout 500 python3 bench/scale.py --root /tmp/scale --source /tmp/sample --pages 1000 5000 --budget 10 --methods hikey lilac strata fif hybrid dense 2>&1 | tee $OUT/scale.md
