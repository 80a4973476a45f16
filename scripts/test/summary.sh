# summary.sh - sourced by run-tests.sh and test-vm.sh: the closing lines of a test run, from
# their counters (passed, failed, skipped) and the arrays `failures` and `skips` (each skip by
# name with its reason). The skips and failures are listed, then the last line, always exactly
# "N passed, M failed"; the status is 1 if any test failed.
print_summary() {
    if [ "$skipped" -gt 0 ]; then
        echo "skipped ($skipped):"
        [ -n "${skips[*]:-}" ] && printf '  %s\n' "${skips[@]}"
    fi
    if [ ${#failures[@]} -gt 0 ]; then
        echo "failed:"; printf '  %s\n' "${failures[@]}"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
