# cmake -DPARTS=A|B|... -DTEMPLATE=T.hpp.in -DOUTPUT=O.hpp -P embed_lua.cmake
# Concatenates the Lua parts into one script and writes OUTPUT from TEMPLATE, where
# @RATELIMIT_LUA_SCRIPT@ is the script and @RATELIMIT_LUA_SCRIPT_SHA1@ its SHA-1 (EVALSHA).
string(REPLACE "|" ";" parts "${PARTS}")
set(RATELIMIT_LUA_SCRIPT "")
foreach(part ${parts})
  file(READ ${part} text)
  string(APPEND RATELIMIT_LUA_SCRIPT "${text}")
endforeach()
string(SHA1 RATELIMIT_LUA_SCRIPT_SHA1 "${RATELIMIT_LUA_SCRIPT}")
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
