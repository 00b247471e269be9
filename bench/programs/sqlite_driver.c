/* SQLite benchmark driver: an in-memory database, a deterministic workload of bulk inserts, index builds,
 * indexed point lookups, joins, aggregates, updates and deletes. Prints one checksum line per phase.
 * usage: sqlite_driver SCALE   (SCALE customers, 8*SCALE orders, SCALE/2 lookups) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

static sqlite3 *db;
static unsigned long long rng = 0x9E3779B97F4A7C15ull;

static unsigned next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

static void die(const char *what) {
    fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *sql) {
    char *err = 0;
    if (sqlite3_exec(db, sql, 0, 0, &err) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, err); exit(1); }
}

static sqlite3_stmt *prep(const char *sql) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, 0) != SQLITE_OK) die(sql);
    return s;
}

/* Runs a query and folds every column of every row into a checksum; prints rows and checksum. */
static void query(const char *label, const char *sql) {
    sqlite3_stmt *s = prep(sql);
    unsigned long long h = 1469598103934665603ull;
    long rows = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        rows++;
        for (int c = 0; c < sqlite3_column_count(s); c++) {
            const unsigned char *t = sqlite3_column_text(s, c);
            for (; t && *t; t++) h = (h ^ *t) * 1099511628211ull;
            h = (h ^ 0xff) * 1099511628211ull;
        }
    }
    if (rc != SQLITE_DONE) die(sql);
    sqlite3_finalize(s);
    printf("%s: %ld rows, checksum %016llx\n", label, rows, h);
}

static const char *syll[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "an", "ex", "or", "ul", "ph", "qu", "st"};

static void make_name(char *buf, int n) {
    int k = 2 + (int)(next_rand() % 4);
    buf[0] = 0;
    for (int i = 0; i < k; i++) strcat(buf, syll[next_rand() % 16]);
    sprintf(buf + strlen(buf), "-%d", n);
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 20000;
    int ncust = scale, norders = 8 * scale, nitems = 500, nlookups = scale / 2;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) die("open");
    exec("PRAGMA cache_size=-65536");
    exec("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, region INTEGER, joined INTEGER)");
    exec("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT, category TEXT, price INTEGER)");
    exec("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, item INTEGER, qty INTEGER, "
         "day INTEGER, note TEXT)");

    char name[64], note[96];
    exec("BEGIN");
    sqlite3_stmt *ins = prep("INSERT INTO items VALUES(?1, ?2, ?3, ?4)");
    for (int i = 1; i <= nitems; i++) {
        make_name(name, i);
        sqlite3_bind_int(ins, 1, i);
        sqlite3_bind_text(ins, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 3, syll[next_rand() % 16], -1, SQLITE_STATIC);
        sqlite3_bind_int(ins, 4, 100 + (int)(next_rand() % 10000));
        if (sqlite3_step(ins) != SQLITE_DONE) die("insert item");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    ins = prep("INSERT INTO customers VALUES(?1, ?2, ?3, ?4)");
    for (int i = 1; i <= ncust; i++) {
        make_name(name, i);
        sqlite3_bind_int(ins, 1, i);
        sqlite3_bind_text(ins, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins, 3, (int)(next_rand() % 50));
        sqlite3_bind_int(ins, 4, (int)(next_rand() % 3650));
        if (sqlite3_step(ins) != SQLITE_DONE) die("insert customer");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    ins = prep("INSERT INTO orders(customer, item, qty, day, note) VALUES(?1, ?2, ?3, ?4, ?5)");
    for (int i = 1; i <= norders; i++) {
        sqlite3_bind_int(ins, 1, 1 + (int)(next_rand() % (unsigned)ncust));
        sqlite3_bind_int(ins, 2, 1 + (int)(next_rand() % (unsigned)nitems));
        sqlite3_bind_int(ins, 3, 1 + (int)(next_rand() % 20));
        sqlite3_bind_int(ins, 4, (int)(next_rand() % 3650));
        make_name(name, i);
        snprintf(note, sizeof note, "order %d for %s", i, name);
        sqlite3_bind_text(ins, 5, note, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(ins) != SQLITE_DONE) die("insert order");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    exec("COMMIT");
    printf("inserted %d customers, %d items, %d orders\n", ncust, nitems, norders);

    exec("CREATE INDEX orders_customer ON orders(customer)");
    exec("CREATE INDEX orders_item_day ON orders(item, day)");
    exec("CREATE INDEX customers_region ON customers(region)");
    exec("CREATE INDEX customers_name ON customers(name)");

    /* Indexed point lookups through prepared statements. */
    sqlite3_stmt *look = prep("SELECT count(*), total(o.qty * i.price) FROM orders o JOIN items i ON i.id = o.item "
                              "WHERE o.customer = ?1");
    sqlite3_stmt *byname = prep("SELECT id, region FROM customers WHERE name >= ?1 ORDER BY name LIMIT 3");
    unsigned long long acc = 0;
    for (int k = 0; k < nlookups; k++) {
        sqlite3_bind_int(look, 1, 1 + (int)(next_rand() % (unsigned)ncust));
        if (sqlite3_step(look) != SQLITE_ROW) die("lookup");
        acc = acc * 31 + (unsigned long long)sqlite3_column_int64(look, 0) * 7 +
              (unsigned long long)sqlite3_column_double(look, 1);
        sqlite3_reset(look);
        make_name(name, 0);
        sqlite3_bind_text(byname, 1, name, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(byname) == SQLITE_ROW) acc = acc * 17 + (unsigned long long)sqlite3_column_int(byname, 0);
        sqlite3_reset(byname);
    }
    sqlite3_finalize(look);
    sqlite3_finalize(byname);
    printf("lookups: %d, checksum %016llx\n", nlookups, acc);

    query("join+group", "SELECT c.region, i.category, count(*), sum(o.qty), sum(o.qty * i.price) "
                        "FROM orders o JOIN customers c ON c.id = o.customer JOIN items i ON i.id = o.item "
                        "GROUP BY c.region, i.category ORDER BY c.region, i.category");
    query("top customers", "SELECT c.name, sum(o.qty * i.price) AS spent FROM orders o "
                           "JOIN customers c ON c.id = o.customer JOIN items i ON i.id = o.item "
                           "GROUP BY o.customer ORDER BY spent DESC, c.name LIMIT 20");
    query("per day", "SELECT day / 30, count(DISTINCT customer), avg(qty), max(qty), min(item) FROM orders "
                     "GROUP BY day / 30 ORDER BY 1");
    query("like", "SELECT count(*), min(name), max(name) FROM customers WHERE name LIKE '%ze%ru%'");
    query("subquery", "SELECT region, count(*) FROM customers c WHERE joined > 1000 AND EXISTS "
                      "(SELECT 1 FROM orders o WHERE o.customer = c.id AND o.qty > 18) GROUP BY region ORDER BY region");
    query("strings", "SELECT substr(note, 7, 3), count(*), length(group_concat(upper(note), ',')) FROM orders "
                     "WHERE item % 7 = 3 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 25");
    exec("BEGIN");
    exec("UPDATE orders SET qty = qty + 1 WHERE day % 11 = 0");
    exec("DELETE FROM orders WHERE customer % 13 = 0");
    exec("COMMIT");
    query("after update", "SELECT count(*), sum(qty), sum(length(note)) FROM orders");
    query("window", "SELECT customer, day, sum(qty) OVER (PARTITION BY customer ORDER BY day ROWS 3 PRECEDING) "
                    "FROM orders WHERE customer < 200 ORDER BY customer, day, id");
    sqlite3_close(db);
    return 0;
}
