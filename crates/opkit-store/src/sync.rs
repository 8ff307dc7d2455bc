//! Lock helpers that recover from poisoning instead of panicking.
//!
//! A lock is poisoned when a thread panicked while holding it. In this crate that can only be a
//! caller's transaction closure panicking under the stage lock: the closure only touches its own
//! [`crate::Txn`], never the guarded data, so the data is consistent and it is safe to go on.
//! The shared state is only mutated by this crate's own code, which has no panicking paths.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
