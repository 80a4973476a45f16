#!/usr/bin/env bash
# test: slow=70
# Checked mode (BOBOX_CHECK=1): the stress tests (libbobox.a) pass, no false alarm. A part of
# hardening_checked.sh, run on its own.
exec bash "$(dirname "$0")/hardening_checked.sh" stress
