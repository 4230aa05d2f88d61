#!/usr/bin/env zsh
# Prints what zsh completes for command lines: it types each line and a TAB into one
# interactive zsh on a pseudo-terminal (zpty), with compadd wrapped to record the matches
# it is given. The matches of each line come sorted, one a line, then a line `.`.
#   zsh -f complete.zsh FUNCTION_DIR LINE...
# With $COMPLETE_DUMP, compinit keeps what it finds in fpath in that file and reads it back
# the next time, instead of scanning every function directory (a second per session).
emulate -L zsh
zmodload zsh/zpty || exit 1
local dir=$1 record output line
shift
record=$(mktemp) || exit 1
trap 'rm -f $record' EXIT
local dump=-D
[[ -n $COMPLETE_DUMP ]] && dump="-d ${(q)COMPLETE_DUMP}"
zpty completion zsh -f -i || exit 1
# The wrapper records what compadd would add (filtered by what is typed); calls that
# only filter or describe (-O, -A, -D) pass through untouched.
zpty -w completion "PS1='<PR''OMPT>' PS2='' RPS1=''; fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u $dump
unsetopt autolist listambiguous automenu beep
compadd() {
  if (( \${@[(I)-[OAD]]} )); then builtin compadd \"\$@\"; return; fi
  local -a matches
  builtin compadd -O matches \"\$@\"
  (( \$#matches )) && print -rl -- \$matches >> ${(q)record}
  builtin compadd \"\$@\"
}"
# Typing ahead of the prompt may be discarded (zle sets the terminal up as it starts): wait
# until the set-up has run and each time for the prompt, whose text no typed line echoes.
zpty -w completion "print READY''MARK"
zpty -r completion output '*READYMARK*' || { zpty -d completion; exit 1; }
zpty -r completion output '*<PROMPT>*' || { zpty -d completion; exit 1; }
for line in "$@"; do
  : >$record
  zpty -w -n completion "$line"$'\t'
  # Clear the line, then wait for a marker that only the command's output contains.
  zpty -w completion $'\C-u'"print END''MARK"
  zpty -r completion output '*ENDMARK*' || { zpty -d completion; exit 1; }
  zpty -r completion output '*<PROMPT>*' || { zpty -d completion; exit 1; }
  sort -u $record
  print .
done
zpty -d completion
