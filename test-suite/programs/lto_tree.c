/* Freeing a tree of trees through a callback (the shape of xz's index_tree_node_end): tree_node_end recurses
 * and calls free_func through a pointer, which re-enters tree_end for the sub-tree. Under --pathprof-lto -O2 the
 * pre-link pipeline has already marked such functions with memory promises (only argument memory, nosync);
 * instrumented, they touch the handoff and the counters, and unless the pass withdraws the promises the
 * optimiser moves the callers' handoff around the calls (path numbers out of range, counts lost).
 * Per run: a perfect tree of depth 3 (15 nodes), each with a sub-tree of depth 2 (7 nodes); 5 runs.
 * tree_node_end: 5 * (15 + 15 * 7) = 600 calls; free_stream: 75; lto_tree_free (other file): 525. */
#include <stdlib.h>
typedef struct node {
    struct node *left, *right;
    struct tree *sub;
} node;
typedef struct tree {
    node *root;
} tree;
void lto_tree_free(void *p, const void *alloc);
static void tree_node_end(node *n, void (*free_func)(void *, const void *)) {
    if (n->left != NULL)
        tree_node_end(n->left, free_func);
    if (n->right != NULL)
        tree_node_end(n->right, free_func);
    free_func(n, 0); // expect: 600
}
static void tree_end(tree *t, void (*free_func)(void *, const void *)) {
    if (t->root != NULL)
        tree_node_end(t->root, free_func);
}
static void free_stream(void *p, const void *a) {
    node *n = p;
    (void)a;
    if (n->sub) {
        tree_end(n->sub, &lto_tree_free);
        free(n->sub);
    }
    free(n);
}
static node *build(int depth, int sub) {
    node *n = calloc(1, sizeof *n);
    if (depth > 0) {
        n->left = build(depth - 1, sub);
        n->right = build(depth - 1, sub);
    }
    if (sub) {
        n->sub = calloc(1, sizeof(tree));
        n->sub->root = build(2, 0);
    }
    return n;
}
int main(void) {
    for (int i = 0; i < 5; i++) {
        tree t = {build(3, 1)};
        tree_end(&t, &free_stream);
    }
    return 0;
}
