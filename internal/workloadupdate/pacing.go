package workloadupdate

import (
	"sort"
)

// Pacing is how many migrations may start now, derived from capacity.
type Pacing struct {
	// ClusterCap is the most migrations at once in the cluster.
	ClusterCap int
	// PerNode is the most outbound migrations of one node; 0 means no cap.
	PerNode int
	// ActiveByNode counts the migrations already leaving each node.
	ActiveByNode map[string]int
}

// clusterCap: an explicit PerCluster, else the nodes running outdated VMIs
// times PerNode (each such node can send PerNode at once, so a bigger cluster
// drains faster without any node sending more), else upstream's 5; bounded by
// parallelMigrationsPerCluster when that is set.
func clusterCap(s Settings, nodesWithOutdated int) int {
	c := s.PerCluster
	switch {
	case c > 0:
	case s.PerNode > 0:
		c = nodesWithOutdated * s.PerNode
	case s.ParallelMigrations != 0:
		c = s.ParallelMigrations
	default:
		c = DefaultParallelMigrations
	}
	if s.ParallelMigrations != 0 {
		c = min(c, s.ParallelMigrations)
	}
	return max(c, 0)
}

// pick chooses up to slots candidates (in their given order of preference)
// spread across their nodes: round by round, one per node that is under its
// cap, the nodes with the most candidates first, since the busiest node bounds
// the drain.
func (p Pacing) pick(cands []*VMI, slots int) []*VMI {
	if slots <= 0 || len(cands) == 0 {
		return nil
	}
	byNode := map[string][]*VMI{}
	var nodes []string
	for _, vmi := range cands {
		n := vmi.Node
		if _, seen := byNode[n]; !seen {
			nodes = append(nodes, n)
		}
		byNode[n] = append(byNode[n], vmi)
	}
	sort.SliceStable(nodes, func(i, j int) bool { return len(byNode[nodes[i]]) > len(byNode[nodes[j]]) })
	active := map[string]int{}
	for n, c := range p.ActiveByNode {
		active[n] = c
	}
	var out []*VMI
	for progress := true; progress && len(out) < slots; {
		progress = false
		for _, n := range nodes {
			if len(out) >= slots {
				break
			}
			if len(byNode[n]) == 0 || (p.PerNode > 0 && active[n] >= p.PerNode) {
				continue
			}
			out = append(out, byNode[n][0])
			byNode[n] = byNode[n][1:]
			active[n]++
			progress = true
		}
	}
	return out
}
