/* live.h - the live statistics (BOBOX_STATS_LIVE=1): the BOBOX_STATS figures of the running
 * process in a small file that bobox-run --stat PID reads, refreshed by the reclaimer after
 * each pass (a few times a second), so that an operator can ask a running process what its
 * heap holds without a restart, a debugger or a signal.
 *
 * The file is $XDG_RUNTIME_DIR/bobox-PID.stats, else /dev/shm/, else /tmp/ (the first that
 * takes it), mode 0600, owned by the process's user, and mapped shared: a refresh is a
 * memory write, no system call. Text, so that `cat` shows it too. Its first line is fixed
 * width; its sequence number is odd while the rest is being rewritten (a seqlock the reader
 * retries on). The process removes it at exit; bobox-run removes the file of a process that
 * is gone (killed, or a different process under a reused PID). */
#ifndef BX_LIVE_H
#define BX_LIVE_H

#include "base/common.h"

#define BX_LIVE_FILE_BYTES 8192
/* The header line's format: fixed width, so that it can be rewritten in place. */
#define BX_LIVE_HEADER "bobox-live 1 seq %020llu ms %020llu pid %010d start %020llu\n"

/* Creates the file and registers the refresh with the reclaimer (BOBOX_STATS_LIVE=1 only). */
void bx_live_init(void);

#endif
