//! Small helpers over `std::sync`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, tolerating poison: no update of the state our mutexes guard can stop
/// half-way in our code, so a lock poisoned by a panic elsewhere (notify, tracing) still
/// guards consistent data.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
