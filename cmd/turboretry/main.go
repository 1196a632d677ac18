// Command turboretry is the TurboRetry-Go command line: one binary whose
// subcommands (serve, restart, agent, keygen, token, doctor) each live in
// their own file and register themselves with register. The tools that
// measure or test the stack (eval, flood, interop) build only with
// -tags eval; the default build answers them with how to get them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Exit statuses shared by all subcommands.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed (or, for inspect, rejected)
	exitUsage = 2 // bad command line
)

// command is one subcommand. run gets the arguments after the subcommand
// name and returns the exit status; ctx is cancelled on SIGINT/SIGTERM so
// long-running subcommands can shut down cleanly.
type command struct {
	name    string
	summary string // one line for the subcommand list
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]*command{}

// register adds a subcommand; each subcommand's file calls it from init.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("turboretry: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand; tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printCommands(stdout)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(ctx, []string{"-h"}, stdout, stdout)
			}
			fmt.Fprintf(stderr, "turboretry: unknown command %q\n", args[1])
			printCommands(stderr)
			return exitUsage
		}
		printCommands(stdout)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "turboretry: unknown command %q\n", name)
		printCommands(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "usage: turboretry <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "turboretry help <command>" for a command's flags.`)
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints usage (a synopsis line, then the flags) to stderr.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may appear before or after the positional
// arguments, and returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagExit maps a flag parsing error to an exit status: -h is a request,
// anything else a usage error (the flag package has printed both).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// usageError prints msg and the usage of fs, and returns exitUsage.
func usageError(fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return exitUsage
}
