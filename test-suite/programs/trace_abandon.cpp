// Exceptions that untraced code catches: libstdc++'s istream (compiled into libstdc++.so, untraced) calls
// this program's streambuf::underflow, which throws through a traced helper; istream::get catches the
// exception and sets badbit, then returns to the traced caller. The traced activations the exception left
// (underflow and refill) have no landing pad: the caller's call site writes an abandon marker.
#include <cstdio>
#include <istream>
#include <stdexcept>
#include <streambuf>

static int refills = 0;

// Traced, called by underflow: every third refill fails.
static char refill(char *buf, int round) {
    if (++refills % 3 == 0)
        throw std::runtime_error("refill failed");
    buf[0] = static_cast<char>('a' + round % 26);
    return buf[0];
}

struct flaky_buf : std::streambuf {
    char ch = 0;
    int round = 0;
    int_type underflow() override {
        if (round == 5)
            return traits_type::eof();
        refill(&ch, round++);
        setg(&ch, &ch, &ch + 1);
        return traits_type::to_int_type(ch);
    }
};

static int read_all(std::istream &in) {
    int n = 0;
    // get() on a failed refill: libstdc++ catches the exception and sets badbit (the mask does not rethrow).
    while (in.get() != std::char_traits<char>::eof())
        n++;
    return n;
}

int main() {
    int total = 0, bad = 0;
    for (int i = 0; i < 4; i++) {
        flaky_buf buf;
        std::istream in(&buf);
        total += read_all(in);
        bad += in.bad();
    }
    std::printf("%d chars, %d bad streams, %d refills\n", total, bad, refills);
    return 0;
}
