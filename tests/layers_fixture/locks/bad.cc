// A deliberate layer violation: the layer check must refuse it.
#include "gateway/server.h"
