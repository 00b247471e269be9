/* A program's own function named `clone` (defined in own_clone_def.c, another translation unit: here only
 * declared), which is not the C library's: the pass must leave its calls alone. Prints "3 1" and exits 0. */
#include <stdio.h>

struct node {
  int value;
  struct node *next;
};

struct node *clone(const struct node *n);

int main(void) {
  struct node tail = {1, 0}, head = {3, &tail};
  struct node *copy = clone(&head);
  printf("%d %d\n", copy->value, copy->next->value);
  return 0;
}
