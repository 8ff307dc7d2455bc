//! opkit-apiserver
