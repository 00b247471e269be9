/* zlib benchmark driver: deflate the input file at several levels, inflate each result back, check it and
 * print sizes and checksums (deterministic, so every build variant must print the same lines). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zlib.h"

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n ? (size_t)n : 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { perror("fread"); exit(2); }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Streams through deflate in 64 KiB chunks, as a real compressor would. */
static size_t compress_stream(const unsigned char *in, size_t len, unsigned char *out, size_t cap, int level) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit(&s, level) != Z_OK) { fprintf(stderr, "deflateInit\n"); exit(2); }
    s.next_out = out;
    s.avail_out = (uInt)cap;
    size_t pos = 0;
    int flush;
    do {
        size_t chunk = len - pos < 65536 ? len - pos : 65536;
        s.next_in = (Bytef *)(in + pos);
        s.avail_in = (uInt)chunk;
        pos += chunk;
        flush = pos == len ? Z_FINISH : Z_NO_FLUSH;
        int rc = deflate(&s, flush);
        if (rc == Z_STREAM_ERROR) { fprintf(stderr, "deflate\n"); exit(2); }
    } while (flush != Z_FINISH);
    size_t n = s.total_out;
    deflateEnd(&s);
    return n;
}

static size_t decompress_stream(const unsigned char *in, size_t len, unsigned char *out, size_t cap) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit(&s) != Z_OK) { fprintf(stderr, "inflateInit\n"); exit(2); }
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)len;
    size_t done = 0;
    int rc;
    do {
        size_t chunk = cap - done < 65536 ? cap - done : 65536;
        s.next_out = out + done;
        s.avail_out = (uInt)chunk;
        rc = inflate(&s, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) { fprintf(stderr, "inflate: %d\n", rc); exit(2); }
        done = s.total_out;
    } while (rc != Z_STREAM_END);
    inflateEnd(&s);
    return done;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s FILE LEVEL...\n", argv[0]); return 2; }
    size_t len;
    unsigned char *in = read_file(argv[1], &len);
    size_t cap = compressBound((uLong)len);
    unsigned char *z = malloc(cap), *back = malloc(len + 1);
    printf("input %zu bytes crc32 %08lx adler32 %08lx\n", len, crc32(0L, in, (uInt)len), adler32(1L, in, (uInt)len));
    for (int i = 2; i < argc; i++) {
        int level = atoi(argv[i]);
        size_t zn = compress_stream(in, len, z, cap, level);
        size_t bn = decompress_stream(z, zn, back, len + 1);
        int ok = bn == len && memcmp(in, back, len) == 0;
        printf("level %d: %zu -> %zu bytes, crc32 %08lx, round trip %s\n", level, len, zn, crc32(0L, z, (uInt)zn),
               ok ? "ok" : "MISMATCH");
        if (!ok) return 1;
    }
    free(in); free(z); free(back);
    return 0;
}
