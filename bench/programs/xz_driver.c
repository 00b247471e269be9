/* xz (liblzma 5.2) benchmark driver: compress the input file with liblzma's multi-threaded .xz encoder, as
 * `xz -T THREADS -PRESET` does, decompress the result, check it, and print the sizes and a checksum of the
 * compressed stream (deterministic for a given thread count and preset: the encoder splits the input into
 * fixed-size blocks whatever the threads' timing, so every build variant must print the same lines).
 *
 * Usage: xz_driver INPUT THREADS PRESET
 *
 * This is the issue-18 multi-threaded workload: the match finder's loops run in every encoder thread, so
 * counter updates in memory bounce cache lines between cores where promoted, register-held counts do not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lzma.h"

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n ? (size_t)n : 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { perror("fread"); exit(2); }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Runs a liblzma stream over `in`, feeding it in 1 MiB chunks as xz's own main loop does; returns the output
 * length. */
static size_t run_stream(lzma_stream *s, const uint8_t *in, size_t len, uint8_t *out, size_t cap) {
    size_t pos = 0;
    s->next_out = out;
    s->avail_out = cap;
    for (;;) {
        if (s->avail_in == 0 && pos < len) {
            size_t chunk = len - pos < (1u << 20) ? len - pos : (1u << 20);
            s->next_in = in + pos;
            s->avail_in = chunk;
            pos += chunk;
        }
        lzma_ret rc = lzma_code(s, pos == len ? LZMA_FINISH : LZMA_RUN);
        if (rc == LZMA_STREAM_END) break;
        if (rc != LZMA_OK) { fprintf(stderr, "lzma_code: %d\n", (int)rc); exit(2); }
        if (s->avail_out == 0) { fprintf(stderr, "output buffer too small\n"); exit(2); }
    }
    size_t n = (size_t)s->total_out;
    lzma_end(s);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s INPUT THREADS PRESET\n", argv[0]); return 2; }
    size_t len;
    uint8_t *in = read_file(argv[1], &len);
    uint32_t threads = (uint32_t)atoi(argv[2]);
    uint32_t preset = (uint32_t)atoi(argv[3]);

    /* One block's bound plus room for the headers and indexes of the many blocks the threads make. */
    size_t cap = lzma_stream_buffer_bound(len) + len / 64 + 65536;
    uint8_t *packed = malloc(cap);
    lzma_mt mt;
    memset(&mt, 0, sizeof mt);
    mt.threads = threads;
    mt.preset = preset;
    mt.check = LZMA_CHECK_CRC64;
    mt.block_size = 0; /* liblzma's default: three times the preset's dictionary */
    lzma_stream enc = LZMA_STREAM_INIT;
    if (lzma_stream_encoder_mt(&enc, &mt) != LZMA_OK) { fprintf(stderr, "lzma_stream_encoder_mt\n"); return 2; }
    size_t packed_len = run_stream(&enc, in, len, packed, cap);

    uint8_t *back = malloc(len ? len : 1);
    lzma_stream dec = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&dec, UINT64_MAX, 0) != LZMA_OK) { fprintf(stderr, "lzma_stream_decoder\n"); return 2; }
    size_t back_len = run_stream(&dec, packed, packed_len, back, len ? len : 1);
    if (back_len != len || memcmp(back, in, len) != 0) { fprintf(stderr, "round trip differs\n"); return 1; }

    printf("xz -T%u -%u: %zu -> %zu bytes, crc64 %016llx\n", threads, preset, len, packed_len,
           (unsigned long long)lzma_crc64(packed, packed_len, 0));
    free(back);
    free(packed);
    free(in);
    return 0;
}
