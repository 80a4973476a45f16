#!/bin/busybox sh
# /init of the test VM: mounts what the tests need, runs /t/guest.sh, powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
expect= suite=full
for arg in $(cat /proc/cmdline); do
    case $arg in
        bobox.expect=*) expect=${arg#bobox.expect=} ;;
        bobox.suite=*) suite=${arg#bobox.suite=} ;;
    esac
done
echo "VMTEST BEGIN"
sh /t/guest.sh "$expect" "$suite"
echo "VMTEST END"
poweroff -f
