# The test helpers moved to test/lib/common.sh; this forwarder stays only for scripts whose
# source line has not moved yet (test/system/hardening_checked.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
