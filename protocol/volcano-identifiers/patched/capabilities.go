/*
Copyright 2026 The Volcano Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package extender

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

const (
	// BodiesObjects is the default value of extender.bodies: the calls carry Volcano's objects.
	BodiesObjects = "objects"
	// BodiesIdentifiers is the value of extender.bodies under which the calls carry identifiers.
	BodiesIdentifiers = "identifiers"

	// capabilitiesPath is asked with GET under extender.urlPrefix.
	capabilitiesPath = "capabilities"
)

// objectsOnly is what an extender that does not answer capabilities is taken to support.
var objectsOnly = Capabilities{Bodies: []string{BodiesObjects}}

// capabilitiesCache keeps each extender's answer for the process (plugins are built anew for
// every session); a failed call forgets it, so that an extender upgraded in place is asked again.
var capabilitiesCache = struct {
	sync.Mutex
	byURL map[string]Capabilities
}{byURL: map[string]Capabilities{}}

// refusedOnce keeps the configurations already warned about missing event verbs.
var refusedOnce sync.Map

func forgetCapabilities(urlPrefix string) {
	capabilitiesCache.Lock()
	defer capabilitiesCache.Unlock()
	delete(capabilitiesCache.byURL, urlPrefix)
}

// capabilities returns the extender's capabilities, asking it when this process has no answer
// kept. fresh is true when it was asked, err why it did not answer: a 404, a failed call or a
// body that cannot be read count as objects only.
func (ep *extenderPlugin) capabilities() (caps Capabilities, fresh bool, err error) {
	capabilitiesCache.Lock()
	defer capabilitiesCache.Unlock()
	if caps, found := capabilitiesCache.byURL[ep.config.urlPrefix]; found {
		return caps, false, nil
	}
	caps, err = ep.askCapabilities()
	if err != nil {
		caps = objectsOnly
	}
	capabilitiesCache.byURL[ep.config.urlPrefix] = caps
	return caps, true, err
}

func (ep *extenderPlugin) askCapabilities() (Capabilities, error) {
	url := strings.TrimRight(ep.config.urlPrefix, "/") + "/" + capabilitiesPath
	resp, err := ep.client.Get(url)
	if err != nil {
		return Capabilities{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Capabilities{}, fmt.Errorf("GET %v: code %v", url, resp.StatusCode)
	}
	caps := Capabilities{}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, maxBodySize)).Decode(&caps); err != nil {
		return Capabilities{}, fmt.Errorf("GET %v: %v", url, err)
	}
	return caps, nil
}

// negotiate decides what this session's calls carry: identifiers when extender.bodies asks
// for them and the extender lists them, the batched predicate when extender.batchPredicateVerb
// is set and the extender answers it. Both need the allocate and deallocate verbs, through
// which the extender follows the session's placements. Otherwise today's bodies and per-node
// predicate, with one warning.
func (ep *extenderPlugin) negotiate() {
	ep.identifiers, ep.batchPredicate = false, false
	wantIdentifiers := ep.config.bodies == BodiesIdentifiers
	wantBatch := ep.config.batchPredicateVerb != ""
	if !wantIdentifiers && !wantBatch {
		return
	}

	if ep.config.allocateFuncVerb == "" || ep.config.deallocateFuncVerb == "" {
		if _, warned := refusedOnce.LoadOrStore(ep.config.urlPrefix, true); !warned {
			klog.Warningf("Extender %s: %s %q and %s need %s and %s, calling it with objects and per-node predicates",
				ep.config.urlPrefix, ExtenderBodies, ep.config.bodies, ExtenderBatchPredicateVerb,
				ExtenderAllocateFuncVerb, ExtenderDeallocateFuncVerb)
		}
		return
	}

	caps, fresh, err := ep.capabilities()
	ep.identifiers = wantIdentifiers && slices.Contains(caps.Bodies, BodiesIdentifiers)
	ep.batchPredicate = wantBatch && caps.BatchPredicate
	switch {
	case !fresh || (wantIdentifiers == ep.identifiers && wantBatch == ep.batchPredicate):
	case err != nil:
		klog.Warningf("Extender %s did not answer its capabilities (%v): calling it with objects and per-node predicates",
			ep.config.urlPrefix, err)
	default:
		klog.Warningf("Extender %s answers bodies %v, batchPredicate %v: calling it with identifiers %v, batched predicate %v",
			ep.config.urlPrefix, caps.Bodies, caps.BatchPredicate, ep.identifiers, ep.batchPredicate)
	}
}
