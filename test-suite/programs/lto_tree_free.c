/* The sub-trees' free function, in another translation unit (see lto_tree.c). */
#include <stdlib.h>
void lto_tree_free(void *p, const void *alloc) {
    (void)alloc;
    free(p); // expect: 525
}
