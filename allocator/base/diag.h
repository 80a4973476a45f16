/* diag.h - messages to stderr and the aborts that report misuse, none of which allocates. */
#ifndef BX_DIAG_H
#define BX_DIAG_H

/* Reports a fatal misuse (invalid or double free) and aborts; never returns. */
__attribute__((noreturn)) void bx_fatal(const char *what, const void *ptr);
/* The same with a message of its own ("bobox: " is prepended). */
__attribute__((noreturn, format(printf, 1, 2))) void bx_fatalf(const char *fmt, ...);
/* Writes a message to stderr without allocating. */
void bx_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bx_message_fd(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
