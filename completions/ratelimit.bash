# bash completion for ratelimit(1)                                 -*- shell-script -*-
# Installed as share/bash-completion/completions/ratelimit. Works with or without the
# bash-completion package (it uses its helpers when they are loaded).

# The options of `command` (none: the global options alone), global options included:
# they are accepted after the command name too.
_ratelimit_options() {
  local options="--config --db --store --redis-prefix --store-timeout --store-ca --store-cert
    --store-key --lock-timeout --on-store-error
    --json -q --quiet -E --limited-exit-code -h --help"
  local limit="-r --rate -a --algorithm -b --burst -c --cost --adaptive"
  case $1 in
  '') options+=" --version" ;;
  try) options+=" $limit" ;;
  wait) options+=" $limit -t --timeout" ;;
  run) options+=" $limit -t --timeout --no-wait -j --concurrency --until-exit --lease --backoff-on --backoff --backoff-max --retries --observe --max-pause --jitter" ;;
  observe) options+=" --headers --status --retry-after --max-pause --grant" ;;
  pipe) options+=" $limit -t --timeout -0 --null" ;;
  reset) options+=" --all" ;;
  gc) options+=" -v --verbose" ;;
  metrics) options+=" -o --output" ;;
  simulate)
    options+=" -r --rate -b --burst -a --algorithm --mode --trace --profile --duration --load
      --seed --format --adaptive --server-limit --workers --calls --latency"
    ;;
  esac
  # shellcheck disable=SC2086 # one option a word
  printf '%s\n' $options
}

# Whether `$1` is an option that takes the next word as its value.
_ratelimit_takes_value() {
  case $1 in
  --config | --db | --store | --redis-prefix | --store-timeout | --store-ca | --store-cert | \
    --store-key | --lock-timeout | --on-store-error | \
    -E | --limited-exit-code | -r | --rate | -a | --algorithm | -b | --burst | -c | --cost | \
    -t | --timeout | -j | --concurrency | --lease | --mode | --trace | --profile | --duration | \
    --load | --seed | --format | --backoff-on | --backoff | --backoff-max | --retries | -o | --output | \
    --max-pause | --headers | --status | --retry-after | --server-limit | --workers | --calls | \
    --latency | --jitter | --grant)
    return 0
    ;;
  esac
  return 1
}

# The keys in the store that the command line names, one a line, from
# `ratelimit status --json`. Prints nothing when that fails, and never creates a database.
_ratelimit_keys() {
  local program=$1
  shift
  local -a store=()
  local word db='' remote=${RATELIMIT_STORE:-}
  while (($#)); do
    word=$1
    shift
    case $word in
    --db | --store | --redis-prefix | --store-ca | --store-cert | --store-key)
      [[ $word == --db ]] && db=$1
      [[ $word == --store ]] && remote=$1
      store+=("$word" "${1:-}")
      shift
      ;;
    --db=* | --store=* | --redis-prefix=* | --store-ca=* | --store-cert=* | --store-key=*)
      [[ $word == --db=* ]] && db=${word#*=}
      [[ $word == --store=* ]] && remote=${word#*=}
      store+=("$word")
      ;;
    esac
  done
  if [[ -z $remote || -n $db ]]; then
    if [[ -z $db ]]; then
      db=${RATELIMIT_DB:-}
    fi
    if [[ -z $db ]]; then
      local state=${XDG_STATE_HOME:-}
      [[ $state == /* ]] || state=$HOME/.local/state
      db=$state/ratelimit/ratelimit.db
    fi
    db=${db/#\~/$HOME}
    [[ -f $db ]] || return 0
  fi
  "$program" "${store[@]}" --lock-timeout 1 status --json 2>/dev/null |
    grep -o '"key": *"[^"\\]*"' | sed 's/^"key": *"//; s/"$//'
}

# The names of the limits that the configuration files define, one a line, from
# `ratelimit [--config FILE] limits --json`. Prints nothing when that fails.
_ratelimit_named_limits() {
  local program=$1
  shift
  local -a config=()
  while (($#)); do
    case $1 in
    --config)
      config=(--config "${2:-}")
      shift
      ;;
    --config=*) config=("$1") ;;
    esac
    shift
  done
  "$program" "${config[@]}" limits --json 2>/dev/null |
    grep -o '"name": *"[^"\\]*"' | sed 's/^"name": *"//; s/"$//'
}

_ratelimit() {
  local cur prev words cword split=false
  if declare -F _init_completion >/dev/null; then
    _init_completion -s || return
  else
    # Without bash-completion, `--opt=value` arrives as three words: join them again.
    local j
    words=()
    for ((j = 0; j < ${#COMP_WORDS[@]}; j++)); do
      if ((j > 0)) && [[ ${words[-1]} == --* ]] &&
        [[ ${COMP_WORDS[j]} == = || ${COMP_WORDS[j - 1]} == = ]]; then
        words[-1]+=${COMP_WORDS[j]}
      else
        words+=("${COMP_WORDS[j]}")
      fi
      ((j == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
    cur=${words[cword]}
    prev=${words[cword - 1]:-}
    if [[ $cur == --*=* ]]; then
      prev=${cur%%=*}
      cur=${cur#*=}
      split=true
    fi
  fi

  # Find the command, count its positional words, and notice `run ... --`.
  local i word command='' positionals=0
  for ((i = 1; i < cword; i++)); do
    word=${words[i]}
    if [[ $word == -- && $command == run ]]; then
      if declare -F _command_offset >/dev/null; then
        # Its argument counts COMP_WORDS, where `--opt=value` may be three words.
        local offset
        for ((offset = 1; offset < COMP_CWORD; offset++)); do
          [[ ${COMP_WORDS[offset]} == -- ]] && break
        done
        _command_offset $((offset + 1))
      elif ((cword == i + 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return
    fi
    if _ratelimit_takes_value "$word"; then
      ((i++))
    elif [[ $word == -* ]]; then
      :
    elif [[ -z $command ]]; then
      command=$word
    else
      ((positionals++))
    fi
  done

  case $prev in
  -a | --algorithm)
    local algorithms="token-bucket leaky-bucket fixed-window sliding-window sliding-log"
    [[ $command == simulate ]] && algorithms+=" all"
    mapfile -t COMPREPLY < <(compgen -W "$algorithms" -- "$cur")
    return
    ;;
  --config | --db | --trace | -o | --output | --store-ca | --store-cert | --store-key | --headers)
    if declare -F _filedir >/dev/null; then
      _filedir
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    [[ ($prev == --trace || $prev == --headers) && - == "$cur"* ]] && COMPREPLY+=(-)
    return
    ;;
  --store)
    mapfile -t COMPREPLY < <(compgen -W "redis:// rediss:// redis-sentinel:// unix:// sqlite:" -- "$cur")
    compopt -o nospace 2>/dev/null
    return
    ;;
  --on-store-error)
    mapfile -t COMPREPLY < <(compgen -W "deny allow local" -- "$cur")
    return
    ;;
  --mode)
    mapfile -t COMPREPLY < <(compgen -W "try wait" -- "$cur")
    return
    ;;
  --profile)
    mapfile -t COMPREPLY < <(compgen -W "steady burst boundary poisson" -- "$cur")
    return
    ;;
  --format)
    mapfile -t COMPREPLY < <(compgen -W "table csv json" -- "$cur")
    return
    ;;
  --status)
    mapfile -t COMPREPLY < <(compgen -W "429 503" -- "$cur")
    return
    ;;
  esac
  if $split || _ratelimit_takes_value "$prev"; then
    return # a number, a rate or a duration: nothing to offer
  fi

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_ratelimit_options "$command")" -- "$cur")
    return
  fi
  if [[ -z $command ]]; then
    mapfile -t COMPREPLY < <(compgen -W "try wait run pause observe pipe status reset gc limits metrics simulate" -- "$cur")
    return
  fi

  local want_keys=false
  case $command in
  try | wait | pipe) ((positionals == 0)) && want_keys=true ;;
  run)
    if ((positionals == 0)); then
      want_keys=true
    elif [[ -z $cur ]]; then
      COMPREPLY=(--)
      return
    fi
    ;;
  pause | observe) ((positionals == 0)) && want_keys=true ;;
  status | reset) want_keys=true ;;
  esac
  if $want_keys; then
    local key
    while IFS= read -r key; do
      [[ $key == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$key")")
    done < <({
      _ratelimit_keys "${words[0]}" "${words[@]:1:cword-1}"
      _ratelimit_named_limits "${words[0]}" "${words[@]:1:cword-1}"
    } | sort -u)
  fi
}

complete -F _ratelimit ratelimit
