// Command committimes gives each file git tracks, unchanged since HEAD, the time
// of the last commit that changed it, as its modification time.
//
// Usage: go run ./hack/committimes (from the repository root; .ci/run calls it)
//
// Go's test cache keys a test's result on the files it opened by their size and
// modification time, not their content. A fresh clone's files all bear the
// time of the clone, so every test that reads a file of the repository (the
// docs, config/, the chart) ran again in every fresh clone, its inputs
// unchanged: the kubevirt controller's package alone is three minutes of CPU.
// With each file's time that of its last commit, a file keeps its time until a
// commit changes it, and a changed file gets a newer one. Files with local
// changes keep theirs.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "committimes:", err)
		os.Exit(1)
	}
}

func run() error {
	// A merge names what it changed against its first parent: a file a merge
	// changed (a resolved conflict) gets the merge's time.
	history, err := git("log", "--format=%x00%ct", "--name-only", "--no-renames", "--diff-merges=first-parent", "HEAD")
	if err != nil {
		return err
	}
	times, err := lastCommitTimes(bytes.NewReader(history))
	if err != nil {
		return err
	}
	changed, err := git("status", "--porcelain", "--no-renames", "-z")
	if err != nil {
		return err
	}
	for _, entry := range strings.Split(string(changed), "\x00") {
		if len(entry) > 3 {
			delete(times, entry[3:])
		}
	}
	set := 0
	for path, t := range times {
		if err := os.Chtimes(path, t, t); err == nil {
			set++
		} else if !os.IsNotExist(err) { // a file a later commit deleted
			return err
		}
	}
	fmt.Printf("committimes: %d files have their last commit's time\n", set)
	return nil
}

// lastCommitTimes reads `git log --format=%x00%ct --name-only` and returns, for
// each path, the newest time of the commits naming it (whatever the log's
// order: commit times can be out of order across merged branches).
func lastCommitTimes(log io.Reader) (map[string]time.Time, error) {
	times := map[string]time.Time{}
	var current time.Time
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "\x00"):
			secs, err := strconv.ParseInt(strings.TrimPrefix(line, "\x00"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("a commit time %q: %v", line[1:], err)
			}
			current = time.Unix(secs, 0)
		case line == "":
		case current.IsZero():
			return nil, fmt.Errorf("a path %q before any commit", line)
		default:
			if current.After(times[line]) {
				times[line] = current
			}
		}
	}
	return times, sc.Err()
}

func git(args ...string) ([]byte, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return out, nil
}
