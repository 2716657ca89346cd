package action

import "syscall"

const sysFstatat = syscall.SYS_NEWFSTATAT
