#!/usr/bin/env bash
# test: slow=190
# Checked mode (BOBOX_CHECK=1): the whole API suite under the preload passes, no false alarm.
# The longest part of hardening_checked.sh (about 2 minutes alone on 2 cores, most of it the
# medium objects of "remote frees race with the owner's own malloc/free"), run on its own.
exec bash "$(dirname "$0")/hardening_checked.sh" api
