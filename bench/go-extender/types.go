package main

import "volcano.sh/volcano/pkg/scheduler/api"

type apiTask = api.TaskInfo
