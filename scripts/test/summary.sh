# summary.sh - sourced by run-tests.sh and test-vm.sh: the closing lines of a test run, from
# their counters (passed, failed, skipped) and the array `failures`. The last line is
# "N passed, M failed" (", K skipped" when some were); the status is 1 if any test failed.
print_summary() {
    if [ ${#failures[@]} -gt 0 ]; then
        echo "failed:"; printf '  %s\n' "${failures[@]}"
    fi
    if [ "$skipped" -gt 0 ]; then
        echo "$passed passed, $failed failed, $skipped skipped"
    else
        echo "$passed passed, $failed failed"
    fi
    [ "$failed" -eq 0 ]
}
