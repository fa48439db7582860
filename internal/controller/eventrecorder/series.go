package eventrecorder

import (
	"container/list"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// key identifies the repeats of one Event: the same type, reason, action and
// note about the same objects from the same reporter. client-go's broadcaster
// leaves the note out but keys on the objects' resourceVersions, which made
// most repeats distinct anyway; here the objects are keyed by identity (see
// identity), so the note is in the key: a series shows its first note, and a
// new one (another pod crashed) must not hide under an old Event's count.
type key struct {
	eventType, reason, action, note string
	regarding, related              corev1.ObjectReference
}

// write is one API write the series table decided on: the Event's creation,
// or its series count brought up to date.
type write struct {
	key          key
	create       bool
	name         string
	namespace    string
	count        int32
	lastObserved time.Time
}

// series is the table's record of one Event it created.
type series struct {
	key             key
	name, namespace string
	count           int32 // occurrences observed
	written         int32 // the count the API server has
	lastObserved    time.Time
	lastWritten     time.Time
}

// seriesTable decides which API writes a stream of Events needs, holding at
// most capacity series: the least recently observed one is ended (its count
// written) to make room. client-go's broadcaster keeps every distinct Event
// for 6 to 12 minutes instead, so a drain that records one Event per VMI holds
// one per migration; here memory is bounded whatever the cluster's size.
type seriesTable struct {
	capacity    int
	finishAfter time.Duration // a series not observed for this long ends
	flushEvery  time.Duration // a growing count is written at most this often
	byKey       map[key]*list.Element
	order       *list.List // of *series, least recently observed first
}

func newSeriesTable(capacity int, finishAfter, flushEvery time.Duration) *seriesTable {
	return &seriesTable{capacity: max(capacity, 1), finishAfter: finishAfter, flushEvery: flushEvery,
		byKey: map[key]*list.Element{}, order: list.New()}
}

// observe records one occurrence at now. A new Event is created under name in
// namespace; a repeat's second occurrence starts the series on the API server
// at once (as client-go does) and later counts wait for tick.
func (t *seriesTable) observe(k key, name, namespace string, now time.Time) []write {
	if el, ok := t.byKey[k]; ok {
		s := el.Value.(*series)
		s.count++
		s.lastObserved = now
		t.order.MoveToBack(el)
		if s.written == 1 {
			return []write{t.written(s, now)}
		}
		return nil
	}
	var writes []write
	if t.order.Len() >= t.capacity {
		if w, ok := t.end(t.order.Front()); ok {
			writes = append(writes, w)
		}
	}
	s := &series{key: k, name: name, namespace: namespace, count: 1, written: 1, lastObserved: now, lastWritten: now}
	t.byKey[k] = t.order.PushBack(s)
	return append(writes, write{key: k, create: true, name: name, namespace: namespace, count: 1, lastObserved: now})
}

// tick ends the series not observed for finishAfter and writes the counts
// that grew more than flushEvery ago.
func (t *seriesTable) tick(now time.Time) []write {
	var writes []write
	for el := t.order.Front(); el != nil; {
		next := el.Next()
		s := el.Value.(*series)
		switch {
		case now.Sub(s.lastObserved) >= t.finishAfter:
			if w, ok := t.end(el); ok {
				writes = append(writes, w)
			}
		case s.count > s.written && now.Sub(s.lastWritten) >= t.flushEvery:
			writes = append(writes, t.written(s, now))
		}
		el = next
	}
	return writes
}

// forget drops the series of the Event name when the API server does not
// have it (its creation failed, or the Event expired): the next occurrence
// creates anew. A later series of the same key (a new Event) is kept.
func (t *seriesTable) forget(k key, name string) {
	if el, ok := t.byKey[k]; ok && el.Value.(*series).name == name {
		t.order.Remove(el)
		delete(t.byKey, k)
	}
}

func (t *seriesTable) len() int { return t.order.Len() }

// end removes a series, returning the write of its last count if the API
// server does not have it yet.
func (t *seriesTable) end(el *list.Element) (write, bool) {
	s := el.Value.(*series)
	t.order.Remove(el)
	delete(t.byKey, s.key)
	if s.count == s.written {
		return write{}, false
	}
	return write{key: s.key, name: s.name, namespace: s.namespace, count: s.count, lastObserved: s.lastObserved}, true
}

func (t *seriesTable) written(s *series, now time.Time) write {
	s.written = s.count
	s.lastWritten = now
	return write{key: s.key, name: s.name, namespace: s.namespace, count: s.count, lastObserved: s.lastObserved}
}
