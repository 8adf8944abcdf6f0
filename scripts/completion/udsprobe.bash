# bash completion for udsprobe: the options are read from `udsprobe --help` (one source with
# the man page), the values of those that take a word from the lists below.
_udsprobe()
{
    local cur prev words cword split
    _init_completion -s || return

    case $prev in
        --mode) COMPREPLY=($(compgen -W 'pingpong stream connect' -- "$cur")); return ;;
        --cpu) COMPREPLY=($(compgen -W 'same split' -- "$cur")); return ;;
        --attach | --backlog-attach)
            COMPREPLY=($(compgen -W 'auto fentry kprobe tracepoint' -- "$cur")); return ;;
        --backlog-source) COMPREPLY=($(compgen -W 'auto iter diag' -- "$cur")); return ;;
        --detail) COMPREPLY=($(compgen -W 'syscall full' -- "$cur")); return ;;
        --if-unix) COMPREPLY=($(compgen -W 'auto cached fresh off' -- "$cur")); return ;;
        --json | --folded | --svg | --prom | --btf | --unix) _filedir; return ;;
        --out | --cgroup | --netns) _filedir -d; return ;;
        --pid) _pids; return ;;
        --comm) _pnames; return ;;
    esac
    $split && return

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '$(_parse_help "$1")' -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
    fi
} &&
    complete -F _udsprobe udsprobe
