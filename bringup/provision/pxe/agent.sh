#!/bin/sh
# bringup agent: report what this machine says about itself to the boot server.
#
# Runs as /init of the agent ramdisk (busybox only) and, on an installed node, from cloud-init's
# first boot (curl or wget). Reads its settings from the kernel command line or the
# environment: bringup.url (the boot server, http://IP:PORT), bringup.mac (the MAC the node
# PXE-booted from) and bringup.token (this boot attempt's token, which every call must carry).
# POSTs one JSON report to $URL/phone-home/$MAC, with the SSH host keys of the installed system
# when there is one, and progress lines to $URL/progress/$MAC. POSIX sh, no bashisms: busybox
# ash runs it.

PATH=/bin:/sbin:/usr/bin:/usr/sbin
export PATH

param() {
    for word in $(cat /proc/cmdline 2>/dev/null); do
        case "$word" in "$1"=*) echo "${word#*=}"; return ;; esac
    done
}

# A JSON string: drop quotes, backslashes and control characters rather than escape them.
js() {
    printf '"%s"' "$(printf '%s' "$1" | tr -d '"\\\000-\037' | sed 's/[[:space:]]*$//')"
}

readf() { [ -r "$1" ] && cat "$1" 2>/dev/null; }

post() {  # post PATH CONTENT-TYPE DATA
    if command -v curl >/dev/null 2>&1; then
        curl -fsS -m 20 -H "Content-Type: $2" -H "X-Bringup-Token: $TOKEN" --data-binary "$3" "$URL$1" >/dev/null
    else
        # (no -T: busybox 1.35 static wget segfaults with a timeout)
        wget -q -O /dev/null --header "Content-Type: $2" --header "X-Bringup-Token: $TOKEN" \
            --post-data "$3" "$URL$1"
    fi
}

progress() { post "/progress/$MAC" text/plain "$1" || true; }

setup_ramdisk() {
    /bin/busybox --install -s /bin
    mkdir -p /proc /sys /dev /tmp /run
    mount -t proc proc /proc
    mount -t sysfs sysfs /sys
    mount -t devtmpfs devtmpfs /dev 2>/dev/null
    for mod in $(cat /etc/bringup/modules 2>/dev/null); do
        insmod "/lib/modules/$mod" 2>/dev/null
    done
}

boot_hooks() {  # steps a ramdisk variant adds (the lab's SSH server), before any report
    for hook in /etc/bringup/boot.d/*; do
        [ -x "$hook" ] && "$hook"
    done
}

iface_for_mac() {
    for dev in /sys/class/net/*; do
        [ "$(readf "$dev/address")" = "$1" ] && { basename "$dev"; return; }
    done
}

network_up() {
    tries=0
    while [ -z "$(iface_for_mac "$MAC")" ] && [ $tries -lt 50 ]; do
        sleep 0.2; tries=$((tries + 1))
    done
    IFACE=$(iface_for_mac "$MAC")
    [ -n "$IFACE" ] || { echo "bringup-agent: no interface with MAC $MAC"; return 1; }
    ip link set lo up
    ip link set "$IFACE" up
    udhcpc -i "$IFACE" -s /etc/bringup/udhcpc.sh -q -f -n -t 10 -T 2 >/dev/null 2>&1
}

host_keys() {  # the SSH host keys, '<type> <base64>' (no comment): none on the agent ramdisk
    keys=""
    for pub in "${BRINGUP_SSH_DIR:-/etc/ssh}"/ssh_host_*_key.pub; do
        [ -r "$pub" ] || continue
        set -- $(cat "$pub")
        [ -n "$2" ] && keys="$keys${keys:+,}$(js "$1 $2")"
    done
    printf '%s' "$keys"
}

report() {
    macs=""
    for dev in /sys/class/net/*; do
        name=$(basename "$dev")
        [ "$name" = lo ] && continue
        [ "$(readf "$dev/type")" = 1 ] || continue   # Ethernet only (ARPHRD_ETHER)
        addr=$(readf "$dev/address")
        [ -n "$addr" ] && macs="$macs${macs:+,}$(js "$addr")"
    done
    disks=""
    for blk in /sys/block/*; do
        name=$(basename "$blk")
        case "$name" in loop*|ram*|zram*|sr*|fd*|dm-*|md*) continue ;; esac
        sectors=$(readf "$blk/size"); sectors=${sectors:-0}
        serial=$(readf "$blk/serial"); [ -n "$serial" ] || serial=$(readf "$blk/device/serial")
        model=$(readf "$blk/device/model")
        rotational=$(readf "$blk/queue/rotational")
        disks="$disks${disks:+,}{\"name\":$(js "$name"),\"size_bytes\":$((sectors * 512)),"
        disks="$disks\"model\":$(js "$model"),\"serial\":$(js "$serial"),\"rotational\":$(js "$rotational")}"
    done
    ip=$(ip -4 -o addr show dev "$IFACE" 2>/dev/null | awk '{print $4}' | head -n 1)
    printf '{"agent":"bringup-agent/1","boot_mac":%s,"macs":[%s],"serial":%s,"chassis_serial":%s,' \
        "$(js "$MAC")" "$macs" "$(js "$(readf /sys/class/dmi/id/product_serial)")" \
        "$(js "$(readf /sys/class/dmi/id/chassis_serial)")"
    printf '"uuid":%s,"vendor":%s,"product":%s,"disks":[%s],"ip":%s,"kernel":%s,"hostname":%s,' \
        "$(js "$(readf /sys/class/dmi/id/product_uuid)")" "$(js "$(readf /sys/class/dmi/id/sys_vendor)")" \
        "$(js "$(readf /sys/class/dmi/id/product_name)")" "$disks" "$(js "${ip%/*}")" \
        "$(js "$(uname -r)")" "$(js "$(hostname)")"
    printf '"ssh_host_keys":[%s]}' "$(host_keys)"
}

main() {
    ramdisk=0
    [ "$$" = 1 ] && ramdisk=1
    [ $ramdisk = 1 ] && setup_ramdisk
    [ $ramdisk = 1 ] && boot_hooks
    URL=${BRINGUP_URL:-$(param bringup.url)}
    MAC=$(printf '%s' "${BRINGUP_MAC:-$(param bringup.mac)}" | tr 'A-F-' 'a-f:')
    TOKEN=${BRINGUP_TOKEN:-$(param bringup.token)}
    if [ -z "$URL" ] || [ -z "$MAC" ]; then
        echo "bringup-agent: bringup.url and bringup.mac must be set"
    else
        if [ $ramdisk = 1 ]; then
            network_up || echo "bringup-agent: no DHCP lease"
        else
            IFACE=$(iface_for_mac "$MAC")
        fi
        progress "agent started ($(uname -r))"
        sent=0
        for attempt in 1 2 3 4 5; do
            if post "/phone-home/$MAC" application/json "$(report)"; then sent=1; break; fi
            sleep "$attempt"
        done
        [ $sent = 1 ] && echo "bringup-agent: report sent to $URL" || echo "bringup-agent: report NOT sent"
    fi
    if [ $ramdisk = 1 ]; then
        # Stay up like a real agent ramdisk (the BMC powers the node off); PID 1 must not exit.
        while :; do sleep 3600; done
    fi
}

main "$@"
