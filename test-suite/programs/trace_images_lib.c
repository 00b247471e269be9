/* Trace mode with several runtime copies in one process: a shared library (its own hidden runtime copy)
   linked by trace_images_main.c. classify() branches three ways; apply() calls back into the executable. */
int classify(int i) {
  if (i % 3 == 0)
    return 1;
  if (i % 3 == 1)
    return 2;
  return 4;
}

int apply(int (*f)(int), int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += f(classify(i));
  return s;
}
