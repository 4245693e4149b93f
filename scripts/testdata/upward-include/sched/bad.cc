// A scheduling-core file that includes the service layer above it.
#include "scheduler/service.h"
