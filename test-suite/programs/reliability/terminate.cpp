// std::terminate and an uncaught exception after work() ran 100 times (argv[1]: "terminate", "throw", or
// nothing for a normal exit).
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

static volatile int sink;

extern "C" __attribute__((noinline)) void work(int i) {
    if (i % 3 == 0)
        sink += 1; // expect: 34
    else
        sink += 2; // expect: 66
}

int main(int argc, char **argv) {
    for (int i = 0; i < 100; i++)
        work(i);
    if (argc > 1 && !std::strcmp(argv[1], "terminate"))
        std::terminate();
    if (argc > 1 && !std::strcmp(argv[1], "throw"))
        throw std::runtime_error("uncaught");
    return 0;
}
