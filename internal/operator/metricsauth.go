package operator

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint authenticates and authorizes its scrapers.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// scrapeDecisionTTL is how long a token's answer is reused: a Prometheus
// scraping every 30 s costs one TokenReview and one SubjectAccessReview per
// scrape at most, a burst of scrapes one pair; a revoked grant stops working
// within it.
const scrapeDecisionTTL = 10 * time.Second

// maxScrapeDecisions bounds the cache (distinct tokens within the TTL).
const maxScrapeDecisions = 1024

// verdict is what the API server said of one token for one request.
type verdict int

const (
	unauthenticated verdict = iota // 401
	forbidden                      // 403
	allowed
)

// reviewer asks the API server who a token is (TokenReview) and whether that
// user may do verb on a non-resource path (SubjectAccessReview), as
// kube-controller-manager's own metrics endpoint does, and remembers answers for
// scrapeDecisionTTL. It is what controller-runtime's
// WithAuthenticationAndAuthorization filter does, without pulling in
// k8s.io/apiserver (11 MB of resident memory for this one check).
type reviewer struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface
	now    func() time.Time

	mu        sync.Mutex
	decisions map[[sha256.Size]byte]decision
}

type decision struct {
	verdict verdict
	until   time.Time
}

func (rv *reviewer) review(ctx context.Context, token, verb, path string) (verdict, error) {
	key := sha256.Sum256([]byte(verb + " " + path + " " + token))
	now := rv.now()
	rv.mu.Lock()
	d, ok := rv.decisions[key]
	rv.mu.Unlock()
	if ok && now.Before(d.until) {
		return d.verdict, nil
	}
	v, err := rv.ask(ctx, token, verb, path)
	if err != nil {
		return 0, err
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.decisions) >= maxScrapeDecisions {
		for k, d := range rv.decisions {
			if !now.Before(d.until) {
				delete(rv.decisions, k)
			}
		}
		if len(rv.decisions) >= maxScrapeDecisions {
			clear(rv.decisions) // a flood of distinct tokens: start over
		}
	}
	rv.decisions[key] = decision{verdict: v, until: now.Add(scrapeDecisionTTL)}
	return v, nil
}

func (rv *reviewer) ask(ctx context.Context, token, verb, path string) (verdict, error) {
	tr, err := rv.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !tr.Status.Authenticated {
		return unauthenticated, nil
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := rv.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	if !sar.Status.Allowed {
		return forbidden, nil
	}
	return allowed, nil
}

// handler answers 401 without a bearer token or for one the API server does not
// know, 403 for a user not allowed the request, 500 when the API server cannot
// be asked; otherwise next serves it.
func (rv *reviewer) handler(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		v, err := rv.review(r.Context(), strings.TrimSpace(token), strings.ToLower(r.Method), r.URL.Path)
		switch {
		case err != nil:
			log.Error(err, "reviewing a metrics scrape")
			http.Error(w, "the API server could not review the request", http.StatusInternalServerError)
		case v == unauthenticated:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case v == forbidden:
			http.Error(w, "Forbidden: get on "+r.URL.Path+" is not granted (ClusterRole virt-operator-metrics-reader)", http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// metricsAuth is the metrics server's FilterProvider.
func metricsAuth(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	rv := &reviewer{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), now: time.Now,
		decisions: map[[sha256.Size]byte]decision{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) { return rv.handler(log, next), nil }, nil
}
