/* A server-like loop. Phase 1 handles 1000 warm-up requests, then __pathprof_reset() discards them. Phase 2
 * handles 10 * 400 requests and calls __pathprof_dump() after every 400, keeping each snapshot as
 * snap-<n>.pathprof (a hard link: the next dump renames a new file over the profile's name). After snapshot
 * n (1..10) the profile holds exactly the phase-2 work so far: handle() entered 400 n times, of which
 * (400 n) / 4 with req % 4 == 0; at exit, 4000 and 1000. argv[1] = "atomic-check" only changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "pathprof.h"

static volatile long sink;

__attribute__((noinline)) void handle(long req) {
    if (req % 4 == 0)
        sink += req; // expect: 1000
    else
        sink -= 1; // expect: 3000
}

int main(void) {
    const char *file = getenv("PATHPROF_FILE");
    for (long r = 0; r < 1000; r++)
        handle(r * 7 + 1);
    __pathprof_reset();
    for (int n = 1; n <= 10; n++) {
        for (long r = 0; r < 400; r++)
            handle((n - 1) * 400 + r);
        if (__pathprof_dump() != 0)
            return 1;
        char snap[64];
        snprintf(snap, sizeof snap, "snap-%d.pathprof", n);
        if (link(file, snap) != 0)
            return 2;
    }
    return 0;
}
