// Package cli holds the cobra commands of the virt-operator binary. Commands
// return errors instead of exiting; ExitCode maps them to the process status
// (2 for bad input), so every command can be tested in-process.
package cli
