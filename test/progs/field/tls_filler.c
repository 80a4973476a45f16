/* tls_filler.so: 32 bytes of initial-exec TLS, as much as libbobox.so has. Loaded under many
 * names by field_ctypes.sh until glibc's static TLS surplus is used up. */
__attribute__((tls_model("initial-exec"))) __thread char tls_fill[32];
char *tls_filler(void) { return tls_fill; }
