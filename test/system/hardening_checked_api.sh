#!/usr/bin/env bash
# test: slow=125
# Checked mode (BOBOX_CHECK=1): the whole API suite under the preload passes, no false alarm.
# The longest part of hardening_checked.sh (about a minute and a half alone on 2 cores), run
# on its own.
exec bash "$(dirname "$0")/hardening_checked.sh" api
