/* Minimal Lua 5.4 interpreter driver: runs one script with the standard libraries; arguments after the
 * script are passed in the global table `arg` (arg[1] ...). */
#include <stdio.h>
#include <stdlib.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s SCRIPT [ARGS...]\n", argv[0]); return 2; }
    lua_State *L = luaL_newstate();
    if (!L) { fprintf(stderr, "cannot create state\n"); return 2; }
    luaL_openlibs(L);
    lua_createtable(L, argc, 0);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - 1);
    }
    lua_setglobal(L, "arg");
    int rc = luaL_dofile(L, argv[1]);
    if (rc != LUA_OK) {
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
        lua_close(L);
        return 1;
    }
    lua_close(L);
    fflush(stdout);
    return 0;
}
