# Shell helpers the scripts share (sourced, not run).

# Installs, with apt (as root, or with sudo), the Debian packages whose commands are missing,
# each given as COMMAND:PACKAGE:
#
#   need_debian_packages etcd:etcd-server protoc:protobuf-compiler
need_debian_packages() {
    local missing=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    echo "== apt-get install ${missing[*]}"
    local sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
}
