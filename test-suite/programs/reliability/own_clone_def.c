/* own_clone.c's `clone`: a deep copy of a list. */
#include <stdlib.h>

struct node {
  int value;
  struct node *next;
};

struct node *clone(const struct node *n) {
  if (!n)
    return 0;
  struct node *c = malloc(sizeof *c);
  c->value = n->value;
  c->next = clone(n->next);
  return c;
}
