/* Trace mode with several runtime copies: a plugin that trace_images_main.c loads with dlopen after its own
   and the library's runtime copies have opened the trace file (this copy joins it later). */
int plugin_scale(int v) {
  int r = 0;
  while (v > 0) {
    r += (v & 1) ? 3 : 1;
    v >>= 1;
  }
  return r;
}
