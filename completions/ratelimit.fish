# fish completion for ratelimit(1).
# Installed as share/fish/vendor_completions.d/ratelimit.fish.

# The words of the command line that are neither options nor option values: the command,
# then its positional arguments. Stops at `--`, which it prints.
function __ratelimit_words
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for token in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        switch $token
            case --
                echo -- --
                return
            case --config --db --store --redis-prefix --store-timeout --store-ca --store-cert --store-key \
                --lock-timeout --on-store-error \
                -E --limited-exit-code -r --rate -a --algorithm -b --burst -c --cost \
                -t --timeout -j --concurrency --lease --mode --trace --profile --duration --load --seed --format \
                --backoff-on --backoff --backoff-max --retries -o --output \
                --max-pause --headers --status --retry-after --server-limit --workers --calls --latency \
                --jitter --grant
                set skip 1
            case '-*'
            case '*'
                echo -- $token
        end
    end
end

# True when no command has been given yet.
function __ratelimit_no_command
    set -l words (__ratelimit_words)
    not set -q words[1]
end

# True when the command is one of $argv, and the line is not past `run ... --`.
function __ratelimit_using
    set -l words (__ratelimit_words)
    set -q words[1]; or return 1
    contains -- -- $words; and return 1
    contains -- $words[1] $argv
end

# True past `run ... --`: the rest is a command line of its own.
function __ratelimit_after_separator
    set -l words (__ratelimit_words)
    test "$words[1]" = run; and contains -- -- $words
end

# True where a KEY goes: the first argument of try, wait, run, pipe, pause and observe, any of status
# and reset.
function __ratelimit_wants_key
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (__ratelimit_words)
    set -q words[1]; or return 1
    contains -- -- $words; and return 1
    switch $words[1]
        case try wait run pipe pause observe
            test (count $words) = 1
        case status reset
            return 0
        case '*'
            return 1
    end
end

# After `run KEY`: the separator before the command.
function __ratelimit_wants_separator
    set -l words (__ratelimit_words)
    test "$words[1]" = run; and test (count $words) -ge 2; and not contains -- -- $words
end

# The keys in the store that the command line names, from `ratelimit status --json`.
# Prints nothing when that fails, and never creates a database.
function __ratelimit_keys
    set -l tokens (commandline -opc)
    set -l program $tokens[1]
    set -e tokens[1]
    command -q -- $program; or return 0
    set -l store
    set -l db
    set -l remote $RATELIMIT_STORE
    while set -q tokens[1]
        set -l token $tokens[1]
        set -e tokens[1]
        switch $token
            case --db --store --redis-prefix --store-ca --store-cert --store-key
                set -q tokens[1]; or break
                test $token = --db; and set db $tokens[1]
                test $token = --store; and set remote $tokens[1]
                set -a store $token $tokens[1]
                set -e tokens[1]
            case '--db=*' '--store=*' '--redis-prefix=*' '--store-ca=*' '--store-cert=*' '--store-key=*'
                string match -q -- '--db=*' $token; and set db (string replace -- --db= '' $token)
                string match -q -- '--store=*' $token; and set remote (string replace -- --store= '' $token)
                set -a store $token
        end
    end
    if test -z "$remote"; or test -n "$db"
        if test -z "$db"
            set db $RATELIMIT_DB
        end
        if test -z "$db"
            set -l state $XDG_STATE_HOME
            string match -q -- '/*' "$state"; or set state $HOME/.local/state
            set db $state/ratelimit/ratelimit.db
        end
        set db (string replace -r -- '^~' $HOME $db)
        test -f "$db"; or return 0
    end
    $program $store --lock-timeout 1 status --json 2>/dev/null \
        | string match -ar -- '"key": *"[^"\\\\]*"' \
        | string replace -r -- '^"key": *"(.*)"$' '$1'
end

# The names of the limits that the configuration files define, from
# `ratelimit [--config FILE] limits --json`. Prints nothing when that fails.
function __ratelimit_named_limits
    set -l tokens (commandline -opc)
    set -l program $tokens[1]
    set -e tokens[1]
    command -q -- $program; or return 0
    set -l config
    while set -q tokens[1]
        set -l token $tokens[1]
        set -e tokens[1]
        switch $token
            case --config
                set -q tokens[1]; or break
                set config --config $tokens[1]
                set -e tokens[1]
            case '--config=*'
                set config $token
        end
    end
    $program $config limits --json 2>/dev/null \
        | string match -ar -- '"name": *"[^"\\\\]*"' \
        | string replace -r -- '^"name": *"(.*)"$' '$1'
end

# Completes the command after `run ... --`, and its arguments, as if typed on its own.
function __ratelimit_complete_command
    set -l tokens (commandline -opc)
    set -l separator (contains -i -- -- $tokens)
    set -l rest $tokens[(math $separator + 1)..-1]
    complete -C (string join -- ' ' (string escape -- $rest) (commandline -ct))
end

complete -c ratelimit -f

# Commands.
complete -c ratelimit -n __ratelimit_no_command -a try -d 'Decide now: exit 0 if granted, 1 if limited'
complete -c ratelimit -n __ratelimit_no_command -a wait -d 'Reserve the next slot and sleep until it'
complete -c ratelimit -n __ratelimit_no_command -a run -d 'Wait for a slot, then execute a command'
complete -c ratelimit -n __ratelimit_no_command -a pause -d 'Grant nothing on a key for a while'
complete -c ratelimit -n __ratelimit_no_command -a observe -d 'Apply what an HTTP server answered to a key'
complete -c ratelimit -n __ratelimit_no_command -a pipe -d 'Copy stdin to stdout, one record per slot'
complete -c ratelimit -n __ratelimit_no_command -a status -d 'Show the state of keys'
complete -c ratelimit -n __ratelimit_no_command -a reset -d 'Forget keys'
complete -c ratelimit -n __ratelimit_no_command -a gc -d 'Remove keys whose state is a fresh key\'s'
complete -c ratelimit -n __ratelimit_no_command -a limits -d 'List the named limits of the configuration files'
complete -c ratelimit -n __ratelimit_no_command -a metrics -d 'Print the counters for Prometheus'
complete -c ratelimit -n __ratelimit_no_command -a simulate -d 'Compare the algorithms on a trace or a profile'

# Global options, before the command name or after it.
set -l global 'not __ratelimit_after_separator'
complete -c ratelimit -n $global -l config -r -F -d 'Configuration file of named limits and the store'
complete -c ratelimit -n $global -l db -r -F -d 'SQLite database shared by all invocations'
complete -c ratelimit -n $global -l store -x -a 'redis:// rediss:// redis-sentinel:// unix:// sqlite:' -d 'Where keys live'
complete -c ratelimit -n $global -l redis-prefix -x -d 'Prefix of the Redis key names'
complete -c ratelimit -n $global -l store-timeout -x -d 'Longest wait to connect to Redis and for each reply'
complete -c ratelimit -n $global -l store-ca -r -F -d 'CA certificate of the rediss:// server'
complete -c ratelimit -n $global -l store-cert -r -F -d 'Client certificate for rediss://'
complete -c ratelimit -n $global -l store-key -r -F -d 'Private key of --store-cert'
complete -c ratelimit -n $global -l lock-timeout -x -d 'Longest wait for the database lock'
complete -c ratelimit -n $global -l on-store-error -x -a 'deny allow local' -d 'What a store failure does'
complete -c ratelimit -n $global -l json -d 'Print JSON on standard output'
complete -c ratelimit -n $global -s q -l quiet -d 'Print nothing on a denial'
complete -c ratelimit -n $global -s E -l limited-exit-code -x -d 'Exit status when limited'
complete -c ratelimit -n $global -s h -l help -d 'Show the usage and an example'
complete -c ratelimit -n __ratelimit_no_command -l version -d 'Show the version and the stores compiled in'

# The limit options.
set -l algorithms token-bucket leaky-bucket fixed-window sliding-window sliding-log
complete -c ratelimit -n '__ratelimit_using try wait run pipe simulate' -s r -l rate -x -d 'Rate N/PERIOD, e.g. 10/s; repeat for several limits'
complete -c ratelimit -n '__ratelimit_using try wait run pipe' -s a -l algorithm -x -a "$algorithms" -d 'Algorithm of the key'
complete -c ratelimit -n '__ratelimit_using simulate' -s a -l algorithm -x -a "all $algorithms" -d 'One algorithm, or all'
complete -c ratelimit -n '__ratelimit_using try wait run pipe simulate' -s b -l burst -x -d 'Token-bucket capacity or leaky-bucket queue depth'
complete -c ratelimit -n '__ratelimit_using try wait run pipe' -s c -l cost -x -d 'Units this request takes'
complete -c ratelimit -n '__ratelimit_using try wait run pipe' -l adaptive -d 'The rates are ceilings of a rate learned from the answers'
complete -c ratelimit -n '__ratelimit_using wait run pipe' -s t -l timeout -x -d 'Longest acceptable wait'

# The options of one command.
complete -c ratelimit -n '__ratelimit_using run' -l no-wait -d 'Run only if a slot is free now, else exit 1'
complete -c ratelimit -n '__ratelimit_using run' -l backoff-on -x -d 'Pause the key when the command exits with this status'
complete -c ratelimit -n '__ratelimit_using run' -l backoff -x -d 'First backoff pause, doubled at each further one'
complete -c ratelimit -n '__ratelimit_using run' -l backoff-max -x -d 'Longest backoff pause'
complete -c ratelimit -n '__ratelimit_using run' -l retries -x -d 'Run the command again after the pause, up to N times'
complete -c ratelimit -n '__ratelimit_using run' -s j -l concurrency -x -d 'At most N commands of KEY at once'
complete -c ratelimit -n '__ratelimit_using run' -l until-exit -d 'Count each command from its start until it exits'
complete -c ratelimit -n '__ratelimit_using run' -l lease -x -d 'On Redis, how long a holder counts as alive unrenewed'
complete -c ratelimit -n '__ratelimit_using run' -l observe -d 'Apply the command\'s HTTP response head to the key'
complete -c ratelimit -n '__ratelimit_using run observe' -l max-pause -x -d 'Longest an answer may hold the key: a pause or a spent quota'
complete -c ratelimit -n '__ratelimit_using run' -l jitter -x -d 'Start the command up to this long after a slot it waited for'
complete -c ratelimit -n '__ratelimit_using observe' -l grant -x -d 'The request\'s grant, as run exports it in $RATELIMIT_GRANT'
complete -c ratelimit -n '__ratelimit_using observe' -l headers -r -F -d 'Response head as curl -D writes it (- reads stdin)'
complete -c ratelimit -n '__ratelimit_using observe' -l status -x -a '429 503' -d 'HTTP status instead of the head\'s'
complete -c ratelimit -n '__ratelimit_using observe' -l retry-after -x -d 'Retry-After instead of the head\'s'
complete -c ratelimit -n '__ratelimit_using pipe' -s 0 -l null -d 'Records end in NUL instead of newline'
complete -c ratelimit -n '__ratelimit_using reset' -l all -d 'Forget every key'
complete -c ratelimit -n '__ratelimit_using gc' -s v -l verbose -d 'Say what was removed'
complete -c ratelimit -n '__ratelimit_using metrics' -s o -l output -r -F -d 'Write to FILE, replaced atomically'
complete -c ratelimit -n '__ratelimit_using simulate' -l mode -x -a 'try wait' -d 'Deny what is over the limit, or let every arrival wait'
complete -c ratelimit -n '__ratelimit_using simulate' -l trace -r -F -d 'Arrivals to replay (- reads stdin)'
complete -c ratelimit -n '__ratelimit_using simulate' -l profile -x -a 'steady burst boundary poisson' -d 'Synthetic arrivals'
complete -c ratelimit -n '__ratelimit_using simulate' -l duration -x -d 'Length of the profile'
complete -c ratelimit -n '__ratelimit_using simulate' -l load -x -d 'Profile arrivals as a multiple of the rate'
complete -c ratelimit -n '__ratelimit_using simulate' -l seed -x -d 'Seed of the poisson profile or the adaptive latencies'
complete -c ratelimit -n '__ratelimit_using simulate' -l adaptive -d 'Replay workers through one adaptive key against --server-limit'
complete -c ratelimit -n '__ratelimit_using simulate' -l server-limit -x -d 'The server\'s secret limit, N/PERIOD[@TIME]'
complete -c ratelimit -n '__ratelimit_using simulate' -l workers -x -d 'Workers of the adaptive replay'
complete -c ratelimit -n '__ratelimit_using simulate' -l calls -x -d 'Calls of the adaptive replay'
complete -c ratelimit -n '__ratelimit_using simulate' -l latency -x -d 'Mean time from a call to its answer'
complete -c ratelimit -n '__ratelimit_using simulate' -l format -x -a 'table csv json' -d 'Output format'

# Keys, the separator of run, and the command after it.
complete -c ratelimit -n __ratelimit_wants_key -a '(__ratelimit_keys)' -d Key
complete -c ratelimit -n __ratelimit_wants_key -a '(__ratelimit_named_limits)' -d 'Named limit'
complete -c ratelimit -n __ratelimit_wants_separator -a -- -d 'End of options; the command follows'
complete -c ratelimit -n __ratelimit_after_separator -a '(__ratelimit_complete_command)'
