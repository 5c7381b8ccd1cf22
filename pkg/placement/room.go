package placement

// FitsNow says whether the workload's pod sets fit what the capacity has
// free now, as Plan assigns them to flavors when it ranks a cluster, and
// if not, why. Plan keeps such a cluster eligible (its room may free up);
// tools that explain a wait (kubectl courier explain) report it. Unknown
// capacity fits.
func FitsNow(w Workload, c Capacity) (bool, string) {
	if !c.Known {
		return true, ""
	}
	return newGang(w).fits(c, now)
}
