package conformance

import (
	_ "volcano.sh/volcano/pkg/scheduler/actions/allocate"
	_ "volcano.sh/volcano/pkg/scheduler/actions/backfill"
	_ "volcano.sh/volcano/pkg/scheduler/actions/enqueue"
	_ "volcano.sh/volcano/pkg/scheduler/actions/preempt"
	_ "volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/cdp"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/extender"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/gang"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/pdb"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/priority"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/resourcequota"
	_ "volcano.sh/volcano/pkg/scheduler/plugins/sla"
	_ "volcano.sh/volcano/pkg/scheduler/uthelper"
)
