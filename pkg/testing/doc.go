// Package testing holds builders for test objects, one package per API
// group: MakeTrainJob(name, ns).RuntimePatch(...).Obj() and the like. Only
// tests import them.
package testing
