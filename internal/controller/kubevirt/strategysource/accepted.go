package strategysource

import (
	"context"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Accepted are the strategies of the ConfigMaps status.installStrategies
// records as accepted, unchanged since (the uninstall lists and deletes in
// their kinds and namespaces; a ConfigMap nobody vouched for must not steer
// it). complete is false when one of them is missing or unreadable.
func (s *Source) Accepted(ctx context.Context, kv *v1.KubeVirt) (strategies []*strategy.Strategy, complete bool, err error) {
	cms, _, err := s.List(ctx)
	if err != nil {
		return nil, false, err
	}
	complete = true
	for _, ref := range kv.Status.InstallStrategies {
		found := false
		for i := range cms {
			cm := &cms[i]
			if string(cm.UID) != ref.UID || strategy.Digest(cm) != ref.Digest {
				continue
			}
			decoded, err := s.decode(cm)
			if err != nil {
				break
			}
			strategies, found = append(strategies, decoded), true
			break
		}
		complete = complete && found
	}
	return strategies, complete, nil
}
