#!/bin/bash
# tools/docs/figures/fastpath_count_test.sh COUNT_FASTPATH [STAGE LOOP]... — the
# sized and unsized fast paths' instruction counts, the figures the stage
# chapters quote: tools/measure/count_fastpath.sh counts each stage's loop
# (built with --config=opt) under callgrind and exits with status 3 where
# the count is not its table's. Every case of that table is counted: 32
# bytes sized for every stage and for stage 4's profiler library; for
# stages 3 and 4, 32 bytes unsized too, and 8192 bytes (above the list
# table). A change that moves a count fails here until the table, and so
# the docs (//docs:docs_check_test), say it.
set -u
count=$1
shift
status=0
while [ $# -ge 2 ]; do
    stage=$1 loop=$2
    shift 2
    cases=("32 hc_free_sized")
    case $stage in
        stage3_pagecache|stage4_reclaim) cases+=("32 hc_free" "8192 hc_free_sized") ;;
    esac
    for c in "${cases[@]}"; do
        read -r size free_fn <<<"$c"
        # The profiler's loop with sampling off: its countdown runs, no
        # sample falls in the loop (the table's figure is that one).
        if out=$(HC_COUNT_BIN=$loop HCMALLOC_PROFILE_SAMPLE_BYTES=0 "$count" "$stage" "$size" "$free_fn" 2>&1); then
            echo "PASS $stage, $size bytes, $free_fn: $(echo "$out" | tail -n 2 | head -n 1)"
        else
            echo "FAIL $stage, $size bytes, $free_fn:"
            echo "$out"
            status=1
        fi
    done
done
exit $status
