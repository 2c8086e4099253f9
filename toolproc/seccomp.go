package toolproc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are refused inside every sandbox with EPERM: what no
// tool needs and what an escape would: tracing and reading other
// processes, mounting and namespaces, the kernel's keyring, BPF and
// performance counters, modules, reboot and kexec, swap, the clock, raw
// I/O ports, file handles that bypass path checks, userfaultfd. Names
// the machine's architecture lacks are left out.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"bpf", "perf_event_open",
	"keyctl", "add_key", "request_key",
	"init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
	"reboot", "kexec_load", "kexec_file_load",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "nfsservctl",
	"settimeofday", "stime", "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "adjtimex",
	"syslog", "iopl", "ioperm", "vhangup", "uselib", "ustat", "sysfs", "_sysctl", "lookup_dcookie",
	"open_by_handle_at", "name_to_handle_at",
	"userfaultfd",
}

// unavailableSyscalls are refused with ENOSYS, so a C library falls back
// to what the filter can inspect: clone3 hides its flags behind a
// pointer (glibc then uses clone, whose namespace flags are checked),
// and io_uring reaches most of the kernel outside any filter.
var unavailableSyscalls = []string{"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"}

// cloneNamespaceFlags are the clone flags that make namespaces; a clone
// with any of them is refused (threads and forks stay allowed).
var cloneNamespaceFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

var (
	seccompOnce  sync.Once
	seccompBytes []byte
	seccompErr   error
)

// seccompProgram returns the sandbox's seccomp filter as bwrap --seccomp
// reads it: the raw sock_filter array of a BPF program, built once.
func seccompProgram() ([]byte, error) {
	seccompOnce.Do(func() { seccompBytes, seccompErr = buildSeccomp() })
	return seccompBytes, seccompErr
}

func buildSeccomp() ([]byte, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	known := func(names []string) []string {
		var out []string
		for _, n := range names {
			if _, ok := native.SyscallNames[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	var clone []seccomp.NameWithConditions
	for _, f := range cloneNamespaceFlags {
		// clone's flags are its first argument on every architecture
		// this package builds for.
		clone = append(clone, seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: f},
		}})
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: known(deniedSyscalls), NamesWithCondtions: clone},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: known(unavailableSyscalls)},
		},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	// The library lets a foreign architecture's calls through to the
	// default action; on x86-64 that would be every 32-bit int 0x80 call.
	// Here they are refused before anything else.
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
	}
	raw, err := bpf.Assemble(append(guard, insts...))
	if err != nil {
		return nil, err
	}
	if len(raw) > bpfMaxInstructions {
		return nil, fmt.Errorf("filter of %d instructions", len(raw))
	}
	var b bytes.Buffer
	for _, r := range raw {
		// struct sock_filter, in the machine's byte order.
		_ = binary.Write(&b, binary.NativeEndian, struct {
			Code   uint16
			Jt, Jf uint8
			K      uint32
		}{r.Op, r.Jt, r.Jf, r.K})
	}
	return b.Bytes(), nil
}

// bpfMaxInstructions is the kernel's BPF_MAXINSNS for a classic filter.
const bpfMaxInstructions = 4096
