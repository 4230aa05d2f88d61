# cmake -DPARTS=A|B|... -DTEMPLATE=T.hpp.in -DOUTPUT=O.hpp -P embed_lua.cmake
# Concatenates the Lua parts into one script and writes OUTPUT from TEMPLATE, where
# @RATELIMIT_LUA_SCRIPT@ is the script, @RATELIMIT_LUA_SCRIPT_PARTS@ the parts as raw string
# literals separated by commas (a literal may hold no more than 64 KiB, the script does), and
# @RATELIMIT_LUA_SCRIPT_SHA1@ the script's SHA-1 (EVALSHA).
string(REPLACE "|" ";" parts "${PARTS}")
set(RATELIMIT_LUA_SCRIPT "")
set(RATELIMIT_LUA_SCRIPT_PARTS "")
foreach(part ${parts})
  file(READ ${part} text)
  string(LENGTH "${text}" length)
  if(length GREATER 60000)
    message(FATAL_ERROR "${part}: ${length} bytes, more than a string literal may hold: split it")
  endif()
  string(APPEND RATELIMIT_LUA_SCRIPT "${text}")
  string(APPEND RATELIMIT_LUA_SCRIPT_PARTS "R\"ratelimit_lua(${text})ratelimit_lua\",\n")
endforeach()
string(SHA1 RATELIMIT_LUA_SCRIPT_SHA1 "${RATELIMIT_LUA_SCRIPT}")
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
