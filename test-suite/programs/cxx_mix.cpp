// C++ stress: templates, std containers, exceptions through plain calls and invokes, computed goto.
// parse() throws for i % 97 == 0, i in [0,5000): 52 times.
#include <map>
#include <vector>
#include <string>
#include <stdexcept>
#include <cstdio>
#include <memory>
struct Node { std::string name; std::vector<std::unique_ptr<Node>> kids; };
static int depth(const Node &n) { int d = 0; for (auto &k : n.kids) d = std::max(d, depth(*k)); return d + 1; }
static void parse(int i, std::map<std::string,int> &m) {
  std::string key = "k" + std::to_string(i % 17);
  if (i % 97 == 0) throw std::runtime_error("bad " + key);
  m[key] += i;
}
int dispatch(int x) {
  static void *tbl[] = {&&a, &&b, &&c};
  goto *tbl[x % 3];
a: return 1;
b: return 2;
c: return 3;
}
int main() {
  std::map<std::string,int> m; int errors = 0, s = 0;
  for (int i = 0; i < 5000; i++) {
    try {
      parse(i, m);
    } catch (const std::exception &e) {
      errors++; // expect: 52
    }
    s += dispatch(i);
  }
  Node root{"r", {}}; Node *cur = &root;
  for (int i = 0; i < 10; i++) { cur->kids.push_back(std::make_unique<Node>(Node{"x", {}})); cur = cur->kids.back().get(); }
  printf("%zu %d %d %d\n", m.size(), errors, s, depth(root));
}
